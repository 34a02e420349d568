<?php

declare(strict_types=1);

namespace Sluice\Tests;

use PHPUnit\Framework\TestCase;
use Sluice\Symfony\SluiceTransport;
use Sluice\Symfony\SluiceTransportFactory;
use Sluice\Symfony\WebhookController;
use Symfony\Component\HttpFoundation\Request;
use Symfony\Component\Messenger\Handler\HandlersLocator;
use Symfony\Component\Messenger\MessageBus;
use Symfony\Component\Messenger\Middleware\HandleMessageMiddleware;
use Symfony\Component\Messenger\Transport\Serialization\PhpSerializer;

/** A class of the app whose unserialization has a side effect: what a gadget chain needs. */
final class Gadget
{
    public static int $woken = 0;

    public function __wakeup(): void
    {
        self::$woken++;
    }
}

final class Ping
{
    public function __construct(public readonly string $what)
    {
    }
}

/** Two handlers of Ping, counting their runs; invoice fails on its first. */
abstract class PingHandler
{
    /** @var array<string,int> */
    public static array $runs = [];

    public function __invoke(Ping $p): void
    {
        $n = self::$runs[static::class] = (self::$runs[static::class] ?? 0) + 1;
        if ($n === 1 && static::class === InvoicePing::class) {
            throw new \RuntimeException('invoice service busy');
        }
    }
}

final class MailPing extends PingHandler
{
}

final class InvoicePing extends PingHandler
{
}

/**
 * Two handlers whose runs follow a script per test: the n-th run of a
 * handler does $script[class][n-1] ("fail", "unrecoverable", "recoverable";
 * "ok" or nothing succeeds).
 */
abstract class ScriptedHandler
{
    /** @var array<string,list<string>> */
    public static array $script = [];
    /** @var array<string,int> */
    public static array $runs = [];

    public function __invoke(Ping $p): void
    {
        $n = self::$runs[static::class] = (self::$runs[static::class] ?? 0) + 1;
        match (self::$script[static::class][$n - 1] ?? 'ok') {
            'fail' => throw new \RuntimeException(static::class . " run $n failed"),
            'unrecoverable' => throw new \Symfony\Component\Messenger\Exception\UnrecoverableMessageHandlingException(static::class . " run $n: no retry can help"),
            'recoverable' => throw new \Symfony\Component\Messenger\Exception\RecoverableMessageHandlingException(static::class . " run $n: try again"),
            'ok' => null,
        };
    }
}

final class FirstHandler extends ScriptedHandler
{
}

final class SecondHandler extends ScriptedHandler
{
}

/** The Symfony Messenger transport and webhook route on Debian's php-symfony-messenger. */
final class SymfonyTest extends TestCase
{
    protected function setUp(): void
    {
        foreach (['Messenger', 'HttpFoundation', 'EventDispatcher'] as $c) {
            $f = "/usr/share/php/Symfony/Component/$c/autoload.php";
            if (!is_file($f)) {
                $this->markTestSkipped("$f: missing (apt-get install php-symfony-messenger)");
            }
            require_once $f;
        }
        // Messenger 6.4's in-memory transport implements ResetInterface,
        // which Debian 13's Messenger autoloader does not load (a Composer
        // app gets it from symfony/service-contracts).
        $contracts = '/usr/share/php/Symfony/Contracts/Service/autoload.php';
        if (is_file($contracts)) {
            require_once $contracts;
        }
    }

    private static function transport(\PDO|\Closure $pdo, string $secret = 'app-secret'): SluiceTransport
    {
        $prefix = getenv('SLUICE_PREFIX') ?: 'sluice_';
        return (new SluiceTransportFactory($pdo instanceof \PDO ? fn () => $pdo : $pdo))
            ->createTransport('sluice://api_job?prefix=' . $prefix, ['secret' => $secret], new PhpSerializer());
    }

    public function testTransportRequiresASecret(): void
    {
        $pdo = Db::pdo($this);
        try {
            (new SluiceTransportFactory(fn () => $pdo))->createTransport('sluice://messenger', [], new PhpSerializer());
            $this->fail('a transport without a secret was made');
        } catch (\InvalidArgumentException $e) {
            $this->assertStringStartsWith('secret: ', $e->getMessage());
        }
        $this->expectExceptionMessage('secret: give it as the transport\'s `secret` option, not in the DSN');
        (new SluiceTransportFactory(fn () => $pdo))->createTransport('sluice://messenger?secret=x', [], new PhpSerializer());
    }

    public function testTransportWritesOnTheAppsCurrentConnection(): void
    {
        $first = Db::pdo($this);
        $current = $first;
        $transport = self::transport(function () use (&$current) { return $current; });
        // The app reconnects (a dropped connection, DB::reconnect()) and
        // opens a transaction on its new connection...
        $current = Db::pdo($this);
        $current->beginTransaction();
        $id = $transport->send(new \Symfony\Component\Messenger\Envelope(new Ping('rolled back')))
            ->last(\Symfony\Component\Messenger\Stamp\TransportMessageIdStamp::class)->getId();
        // ...which it rolls back: the message was written inside it, so it is gone.
        $current->rollBack();
        $this->assertSame(0, Db::count($first, 'id = ?', [$id]), 'the job was written outside the app\'s transaction');
    }

    /** @return array{0:MessageBus,1:\ArrayObject} */
    private static function bus(): array
    {
        $handled = new \ArrayObject();
        $bus = new MessageBus([new HandleMessageMiddleware(new HandlersLocator([
            Ping::class => [function (Ping $p) use ($handled) { $handled[] = $p->what; }],
        ]))]);
        return [$bus, $handled];
    }

    /** sluice's webhook request for job $id of the database, signed with $hookSecret. */
    private static function request(\PDO $pdo, int $id, array $payloadChanges = [], string $hookSecret = 'hook-secret', int $attempt = 1, int $maxAttempts = 3): Request
    {
        $job = Db::job($pdo, $id);
        $payload = array_merge(json_decode($job['payload'], true), $payloadChanges);
        $body = json_encode(['id' => $id, 'type' => 'api_job', 'key' => '', 'attempt' => $attempt, 'max_attempts' => $maxAttempts, 'payload' => $payload]);
        $key = "job-$id-1700000000000000";
        $t = time();
        $sig = "t=$t,v2=" . hash_hmac('sha256', "$t." . strlen($key) . ":$key.$body", $hookSecret);
        return Request::create('/sluice/jobs', 'POST', [], [], [], [
            'HTTP_X_SLUICE_SIGNATURE' => $sig, 'HTTP_IDEMPOTENCY_KEY' => $key, 'CONTENT_TYPE' => 'application/json'], $body);
    }

    public function testControllerDecodesOnlyWhatTheTransportSigned(): void
    {
        $pdo = Db::pdo($this);
        $id = self::transport($pdo)->send(new \Symfony\Component\Messenger\Envelope(new Ping('signed')))
            ->last(\Symfony\Component\Messenger\Stamp\TransportMessageIdStamp::class)->getId();
        [$bus, $handled] = self::bus();
        $controller = new WebhookController($bus, 'hook-secret', null, 'sluice', null, messageSecret: ['new-secret', 'app-secret']);
        $r = $controller(self::request($pdo, $id));
        $this->assertSame(200, $r->getStatusCode(), (string) $r->getContent());
        $this->assertSame(['signed'], $handled->getArrayCopy());

        // What a token holder could enqueue: the app's own class, serialized.
        $gadget = addslashes(serialize(new Gadget()));
        $signed = json_decode(Db::job($pdo, $id)['payload'], true)['signature'];
        Gadget::$woken = 0;
        foreach ([
            'payload.signature: missing' => ['body' => $gadget, 'signature' => null],
            'payload.signature: mismatch' => ['body' => $gadget, 'signature' => $signed],
            'payload.signature: unknown version' => ['body' => $gadget, 'signature' => 'v0=' . str_repeat('0', 64)],
            'payload.headers.type: want a string' => ['headers' => ['type' => 1]],
        ] as $want => $forged) {
            $r = $controller(self::request($pdo, $id, $forged));
            $this->assertSame(422, $r->getStatusCode(), $want);
            $this->assertStringContainsString($want, (string) $r->getContent());
        }
        $this->assertSame(0, Gadget::$woken, 'a forged envelope was unserialized');
        $this->assertSame(['signed'], $handled->getArrayCopy());
        // Signed with a secret the controller does not hold.
        $other = self::transport($pdo, 'another-app')->send(new \Symfony\Component\Messenger\Envelope(new Ping('other app')))
            ->last(\Symfony\Component\Messenger\Stamp\TransportMessageIdStamp::class)->getId();
        $this->assertSame(422, $controller(self::request($pdo, $other))->getStatusCode());

        $this->expectExceptionMessage('messageSecret: want the secret');
        new WebhookController($bus, 'hook-secret');
    }

    public function testRetryRunsOnlyTheHandlersThatFailed(): void
    {
        $pdo = Db::pdo($this);
        $transport = self::transport($pdo);
        $id = $transport->send(new \Symfony\Component\Messenger\Envelope(new Ping('order 7')))
            ->last(\Symfony\Component\Messenger\Stamp\TransportMessageIdStamp::class)->getId();
        // A worker claimed it (this test's server runs none).
        $pdo->prepare('UPDATE ' . Db::table('jobs') . " SET status = 'processing', locked_by = 'php-test' WHERE id = ?")->execute([$id]);
        PingHandler::$runs = [];
        $bus = new MessageBus([new HandleMessageMiddleware(new HandlersLocator([
            Ping::class => [new MailPing(), new InvoicePing()],
        ]))]);
        $controller = new WebhookController($bus, 'hook-secret', null, 'sluice', null, messageSecret: 'app-secret', transport: $transport);

        $r = $controller(self::request($pdo, $id));
        $this->assertSame(503, $r->getStatusCode(), 'the failed handler is retried');
        $this->assertSame([MailPing::class => 1, InvoicePing::class => 1], PingHandler::$runs);
        $r = $controller(self::request($pdo, $id, [], 'hook-secret', 2));
        $this->assertSame(200, $r->getStatusCode(), (string) $r->getContent());
        $this->assertSame([MailPing::class => 1, InvoicePing::class => 2], PingHandler::$runs,
            'the retry ran only the handler that failed: the mail was not sent twice');
    }

    /**
     * The same scenarios on Symfony's own worker (Worker, the in-memory
     * transport, SendFailedMessageForRetryListener with a retry strategy
     * of max_retries = attempts - 1) and on the sluice path (the transport
     * writes the job, the controller answers each attempt as sluice's
     * worker would see it, up to max_attempts): the runs of each handler and
     * the end state must match, except where docs/php.md's table says
     * sluice differs.
     *
     * @return iterable<string,array{array<string,list<string>>,array{0:array<string,int>,1:string},?array{0:array<string,int>,1:string}}>
     */
    public static function scenarios(): iterable
    {
        $f = FirstHandler::class;
        $s = SecondHandler::class;
        yield 'both succeed' => [[], [[$f => 1, $s => 1], 'success'], null];
        yield 'the second fails once: only it runs again' => [[$s => ['fail']], [[$f => 1, $s => 2], 'success'], null];
        yield 'the first always fails: failed after the attempts, the second ran once' =>
            [[$f => ['fail', 'fail', 'fail', 'fail']], [[$f => 3, $s => 1], 'failed'], null];
        yield 'unrecoverable: failed at once, the other handler still ran' =>
            [[$f => ['unrecoverable']], [[$f => 1, $s => 1], 'failed'], null];
        yield 'recoverable within the attempts' => [[$s => ['recoverable', 'recoverable']], [[$f => 1, $s => 3], 'success'], null];
        // Retried past max_retries: on sluice, past the job's last attempt as a new job.
        yield 'recoverable past the attempts' => [[$s => ['recoverable', 'recoverable', 'recoverable']],
            [[$f => 1, $s => 4], 'success'], null];
        // Unrecoverable only when every handler's exception is.
        yield 'one unrecoverable, one plain failure: retried' => [[$f => ['unrecoverable'], $s => ['fail']],
            [[$f => 2, $s => 2], 'success'], null];
    }

    /** @dataProvider scenarios */
    public function testSameOutcomeAsSymfonysWorker(array $script, array $symfony, ?array $sluiceDiffers): void
    {
        $attempts = 3;
        ScriptedHandler::$script = $script;
        ScriptedHandler::$runs = [];
        $this->assertSame($symfony, $this->onSymfonysWorker($attempts), "Symfony's worker");
        ScriptedHandler::$runs = [];
        $this->assertSame($sluiceDiffers ?? $symfony, $this->onSluice($attempts), 'the sluice transport and controller');
    }

    /** A container of services by name, as the framework's would give them. */
    private static function services(array $services): \Psr\Container\ContainerInterface
    {
        return new class ($services) implements \Psr\Container\ContainerInterface {
            public function __construct(private readonly array $services)
            {
            }

            public function get(string $id): mixed
            {
                return $this->services[$id] ?? throw new \OutOfBoundsException("no service $id");
            }

            public function has(string $id): bool
            {
                return isset($this->services[$id]);
            }
        };
    }

    private static function handlers(): HandleMessageMiddleware
    {
        return new HandleMessageMiddleware(new HandlersLocator([Ping::class => [new FirstHandler(), new SecondHandler()]]));
    }

    /** @return array{0:array<string,int>,1:string} */
    private function onSymfonysWorker(int $attempts): array
    {
        $memory = new \Symfony\Component\Messenger\Transport\InMemoryTransport();
        $transports = self::services(['memory' => $memory]);
        $bus = new MessageBus([new \Symfony\Component\Messenger\Middleware\SendMessageMiddleware(
            new \Symfony\Component\Messenger\Transport\Sender\SendersLocator([Ping::class => ['memory']], $transports)), self::handlers()]);
        $events = new \Symfony\Component\EventDispatcher\EventDispatcher();
        $events->addSubscriber(new \Symfony\Component\Messenger\EventListener\SendFailedMessageForRetryListener($transports,
            self::services(['memory' => new \Symfony\Component\Messenger\Retry\MultiplierRetryStrategy($attempts - 1, 0)])));
        $end = 'none';
        $events->addListener(\Symfony\Component\Messenger\Event\WorkerMessageHandledEvent::class, function () use (&$end) { $end = 'success'; });
        $events->addListener(\Symfony\Component\Messenger\Event\WorkerMessageFailedEvent::class, function ($e) use (&$end) {
            $end = $e->willRetry() ? 'retry' : 'failed';
        });
        $events->addListener(\Symfony\Component\Messenger\Event\WorkerRunningEvent::class, function ($e) {
            if ($e->isWorkerIdle()) {
                $e->getWorker()->stop();
            }
        });
        $bus->dispatch(new Ping('scenario'));
        (new \Symfony\Component\Messenger\Worker(['memory' => $memory], $bus, $events))->run(['sleep' => 0]);
        ksort(ScriptedHandler::$runs);
        return [ScriptedHandler::$runs, $end];
    }

    /** @return array{0:array<string,int>,1:string} */
    private function onSluice(int $attempts): array
    {
        $pdo = Db::pdo($this);
        $transport = self::transport($pdo);
        $id = $transport->send(new \Symfony\Component\Messenger\Envelope(new Ping('scenario')))
            ->last(\Symfony\Component\Messenger\Stamp\TransportMessageIdStamp::class)->getId();
        $pdo->prepare('UPDATE ' . Db::table('jobs') . " SET status = 'processing', locked_by = 'php-test' WHERE id = ?")->execute([$id]);
        $controller = new WebhookController(new MessageBus([self::handlers()]), 'hook-secret', null, 'sluice', null,
            messageSecret: 'app-secret', transport: $transport);
        $end = 'none';
        for ($attempt = 1, $deliveries = 0; $attempt <= $attempts && $deliveries < 10; $attempt++, $deliveries++) {
            // As sluice reads it: 2xx done, 422 failed, 503 a retry while attempts remain.
            $r = $controller(self::request($pdo, $id, [], 'hook-secret', $attempt, $attempts));
            $end = match ($r->getStatusCode()) { 200 => 'success', 422 => 'failed', 503 => $attempt < $attempts ? 'retry' : 'failed' };
            $next = json_decode((string) $r->getContent(), true)['retried_as'] ?? null;
            if ($end === 'success' && $next !== null) {
                // Went on as a new job: deliver that one, from its first attempt.
                $id = $next;
                $pdo->prepare('UPDATE ' . Db::table('jobs') . " SET status = 'processing', locked_by = 'php-test' WHERE id = ?")->execute([$id]);
                $attempt = 0;
                continue;
            }
            if ($end !== 'retry') {
                break;
            }
        }
        ksort(ScriptedHandler::$runs);
        return [ScriptedHandler::$runs, $end];
    }
}
