<?php
// The route sluice calls. In a Symfony app, a controller service:
//     #[Route('/sluice/jobs', methods: ['POST'])] → Sluice\Symfony\WebhookController
declare(strict_types=1);
[, $bus, $current, , $transport] = require __DIR__ . '/../bootstrap.php';

use Symfony\Component\HttpFoundation\Request;

$controller = new Sluice\Symfony\WebhookController($bus, explode(',', getenv('HOOK_SECRET') ?: ''), null, 'sluice', $current,
    messageSecret: getenv('APP_SECRET') ?: null, transport: $transport);
$controller(Request::createFromGlobals())->send();
