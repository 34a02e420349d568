#!/usr/bin/env bash
# The PHP part of CI (issue 26), called by .ci/run once the databases are up
# and SLUICE_TEST_* are exported: installs what the PHP tests need from
# Debian when missing, then runs them. They are Go tests that drive real
# PHP (PHPUnit, php -S, Composer from a path repository) beside the real
# sluice binary, so `go test ./...` runs them too; this script only makes
# sure the tools are there and runs the PHP packages on their own.
#
#   bash .ci/php.sh            install what is missing, then run the PHP tests
#   bash .ci/php.sh --install  only install (for a .ci/run whose go test ./... runs them)
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=()
have_ext() { php -r "exit(extension_loaded('$1') ? 0 : 1);" 2>/dev/null; }
command -v php >/dev/null 2>&1 || pkgs+=(php-cli)
have_ext pdo_mysql || pkgs+=(php-mysql)
have_ext pdo_pgsql || pkgs+=(php-pgsql)
have_ext pdo_sqlite || pkgs+=(php-sqlite3)
have_ext curl || pkgs+=(php-curl)
command -v composer >/dev/null 2>&1 || pkgs+=(composer)
command -v phpunit >/dev/null 2>&1 || pkgs+=(phpunit)
[ -f /usr/share/php/Illuminate/autoload.php ] || pkgs+=(php-laravel-framework)
[ -f /usr/share/php/Symfony/Component/Messenger/autoload.php ] || pkgs+=(php-symfony-messenger)
if [ ${#pkgs[@]} -gt 0 ]; then
  echo "== installing ${pkgs[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
fi
php --version | head -1
phpunit --version | head -1

# The adapters are also held to Debian 13's frameworks on PHP 8.4: Illuminate
# 10.48 (TestLaravelQueueOnLaravel10) and, with PHPUnit 11, Symfony
# Messenger 6.4 (TestPHPUnitOnDebian13), in a chroot built once per machine
# from Debian's archive and kept under /var/cache; SLUICE_TEST_LARAVEL10_ROOT
# names it for the tests (.ci/run exports it).
laravel10_root=${SLUICE_TEST_LARAVEL10_ROOT:-/var/cache/sluice-ci/trixie-laravel10}
trixie_pkgs=php8.4-cli,php8.4-mysql,php8.4-pgsql,php8.4-curl,php-laravel-framework,php-symfony-messenger,phpunit,composer
if [ ! -x "$laravel10_root/usr/bin/php8.4" ]; then
  command -v mmdebstrap >/dev/null 2>&1 || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null; }
  echo "== building the Debian 13 chroot for Laravel 10 in $laravel10_root"
  mkdir -p "$(dirname "$laravel10_root")"
  rm -rf "$laravel10_root.tmp"
  for try in 1 2 3; do
    if mmdebstrap -q --variant=apt --include="$trixie_pkgs" trixie "$laravel10_root.tmp"; then
      mv "$laravel10_root.tmp" "$laravel10_root"
      break
    fi
    rm -rf "$laravel10_root.tmp"
    [ "$try" = 3 ] && { echo "mmdebstrap failed 3 times" >&2; exit 1; }
    sleep 10
  done
fi
# A chroot built before Messenger and PHPUnit were added gets them now.
if [ ! -f "$laravel10_root/usr/share/php/Symfony/Component/Messenger/autoload.php" ] || [ ! -x "$laravel10_root/usr/bin/phpunit" ] ||
  [ ! -e "$laravel10_root/usr/lib/php/20240924/pdo_pgsql.so" ]; then
  echo "== adding Messenger, PHPUnit and pdo_pgsql to $laravel10_root"
  chroot "$laravel10_root" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(echo "$trixie_pkgs" | tr , ' ') >/dev/null"
fi
[ "${1:-}" = "--install" ] && exit 0
export SLUICE_TEST_LARAVEL10_ROOT=$laravel10_root

echo "== PHP client, examples and guide"
go test -count=1 ./clients/php/... ./examples/php/... ./cmd/sluice/internal/cli -run 'TestPHPUnit|TestPHPGuide|TestLibraryExample|TestLaravelQueue|TestMessengerTransport|TestPHPExample|TestImport'
