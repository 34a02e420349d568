<?php

declare(strict_types=1);

// PSR-4 for the library and its tests without a vendor/ directory, so that
// Debian's phpunit runs them as they are.
spl_autoload_register(function (string $class): void {
    foreach (['Sluice\\Tests\\' => __DIR__ . '/', 'Sluice\\' => __DIR__ . '/../src/'] as $ns => $dir) {
        if (str_starts_with($class, $ns)) {
            $file = $dir . str_replace('\\', '/', substr($class, strlen($ns))) . '.php';
            if (is_file($file)) {
                require $file;
            }
            return;
        }
    }
});
