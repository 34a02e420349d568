<?php
// The web front controller, as in a Laravel app: the HTTP kernel and the
// router. sluice's route, POST /sluice/jobs, comes from
// SluiceServiceProvider, outside the api group and its throttle.
declare(strict_types=1);
$app = require __DIR__ . '/../bootstrap.php';

$kernel = $app->make(Illuminate\Contracts\Http\Kernel::class);
$response = $kernel->handle($request = Illuminate\Http\Request::capture());
$response->send();
$kernel->terminate($request, $response);
