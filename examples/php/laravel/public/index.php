<?php
// The web front controller, reduced to the route sluice calls. In a full
// Laravel app this is one line in routes/api.php:
//     Route::post('/sluice/jobs', \Sluice\Laravel\WebhookController::class);
declare(strict_types=1);
$app = require __DIR__ . '/../bootstrap.php';

if ($_SERVER['REQUEST_METHOD'] === 'POST' && parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH) === '/sluice/jobs') {
    $app->make(Sluice\Laravel\WebhookController::class)(Illuminate\Http\Request::capture())->send();
} else {
    http_response_code(404);
}
