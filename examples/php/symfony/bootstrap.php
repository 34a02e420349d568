<?php
// The message bus of a Symfony app, wired by hand (the framework's
// messenger.yaml does the same): SyncOrder is routed to the transport
// sluice://messenger, whose sender writes a sluice job on the app's PDO.
declare(strict_types=1);

require __DIR__ . '/vendor/autoload.php';

use App\Senders;
use App\NotifyOrderHandler;
use App\SyncOrder;
use App\SyncOrderHandler;
use Sluice\Symfony\CurrentDelivery;
use Sluice\Symfony\SluiceTransportFactory;
use Symfony\Component\Messenger\Handler\HandlersLocator;
use Symfony\Component\Messenger\MessageBus;
use Symfony\Component\Messenger\Middleware\HandleMessageMiddleware;
use Symfony\Component\Messenger\Middleware\SendMessageMiddleware;
use Symfony\Component\Messenger\Transport\Sender\SendersLocator;
use Symfony\Component\Messenger\Transport\Serialization\PhpSerializer;

$pdo = new PDO(getenv('APP_DSN'), getenv('APP_DB_USER') ?: null, getenv('APP_DB_PASSWORD') ?: null, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
$prefix = getenv('APP_PREFIX') ?: '';
// With Doctrine: fn () => $entityManager->getConnection()->getNativeConnection()
// (called at every send, so a reconnected app writes on its new connection).
// secret signs each envelope; the webhook route decodes only what it signed.
$transport = (new SluiceTransportFactory(fn () => $pdo))->createTransport('sluice://messenger?queue=orders',
    ['secret' => getenv('APP_SECRET') ?: null], new PhpSerializer());
$current = new CurrentDelivery();
$bus = new MessageBus([
    new SendMessageMiddleware(new SendersLocator([SyncOrder::class => ['sluice']], new Senders(['sluice' => $transport]))),
    new HandleMessageMiddleware(new HandlersLocator([SyncOrder::class => [
        new NotifyOrderHandler($pdo, $prefix), new SyncOrderHandler($pdo, $current, $prefix)]])),
]);

return [$pdo, $bus, $current, $prefix, $transport];
