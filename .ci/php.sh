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
[ "${1:-}" = "--install" ] && exit 0

echo "== PHP client, examples and guide"
go test -count=1 ./clients/php/... ./examples/php/... ./cmd/sluice/internal/cli -run 'TestPHPUnit|TestPHPGuide|TestLibraryExample|TestLaravelQueue|TestMessengerTransport|TestPHPExample|TestImport'
