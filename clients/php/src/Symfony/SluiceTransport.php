<?php

declare(strict_types=1);

namespace Sluice\Symfony;

use Sluice\Client;
use Symfony\Component\Messenger\Envelope;
use Symfony\Component\Messenger\Stamp\DelayStamp;
use Symfony\Component\Messenger\Stamp\TransportMessageIdStamp;
use Symfony\Component\Messenger\Transport\Serialization\PhpSerializer;
use Symfony\Component\Messenger\Transport\Serialization\SerializerInterface;
use Symfony\Component\Messenger\Transport\TransportInterface;

/**
 * A Messenger transport whose sender writes a sluice job with the app's PDO
 * (Doctrine's native connection), so inside its open transaction: the
 * encoded envelope, signed with the app's secret, is the job's payload
 * ({"body", "headers", "signature"}), a DelayStamp its run time. sluice
 * delivers it to WebhookController, which checks the signature before it
 * decodes anything and hands the envelope to the bus; there is no
 * messenger:consume, so get() is not how messages arrive.
 */
final class SluiceTransport implements TransportInterface
{
    /** @var \Closure():\PDO */
    private readonly \Closure $pdo;
    private readonly SerializerInterface $serializer;
    private readonly EnvelopeSignature $signature;

    /**
     * @param \PDO|\Closure():\PDO $pdo the app's connection, or (better) a closure
     *     that returns its current one: it is called at every send, so a
     *     reconnected app writes on its new connection and inside its transaction
     * @param array{type?:string,queue?:string,prefix?:string,secret?:string|list<string>} $options
     *     type: the sluice type that sluice.yaml sends to the webhook route
     *     (default "messenger"); queue: the sluice queue (default: the type's);
     *     secret (required): signs each envelope, the WebhookController's
     *     $messageSecret (typically %kernel.secret%)
     */
    public function __construct(\PDO|\Closure $pdo, ?SerializerInterface $serializer = null, private readonly array $options = [])
    {
        $this->pdo = $pdo instanceof \PDO ? fn () => $pdo : $pdo;
        $this->serializer = $serializer ?? new PhpSerializer();
        $this->signature = new EnvelopeSignature($options['secret'] ?? null, 'secret');
    }

    public function send(Envelope $envelope): Envelope
    {
        $payload = $this->encode($envelope);
        $options = [];
        if (isset($this->options['queue'])) {
            $options['queue'] = $this->options['queue'];
        }
        $delay = $envelope->last(DelayStamp::class);
        if ($delay !== null && $delay->getDelay() > 0) {
            $options['delay'] = $delay->getDelay() / 1000;
        }
        $r = $this->client()->enqueue($this->options['type'] ?? 'messenger', $payload, $options);
        return $envelope->with(new TransportMessageIdStamp($r->id));
    }

    /**
     * @internal WebhookController: the envelope of a job whose handlers
     * partly succeeded, with their HandledStamps, becomes the payload of
     * the job's next attempt (still running, so sluice has not read it yet),
     * so that the retry runs only the handlers that failed, as Symfony's
     * worker does when it sends the failed envelope back to its transport.
     */
    public function keepHandled(Envelope $failed, int $jobId): void
    {
        $payload = $this->encode($failed);
        $client = $this->client();
        $json = \Sluice\Rules::job('messenger', $payload, [])['payload'];
        $st = ($this->pdo)()->prepare("UPDATE {$client->table()} SET payload = ? WHERE id = ? AND status = 'processing'");
        $st->execute([$json, $jobId]);
        if ($st->rowCount() !== 1) {
            throw new \RuntimeException("job $jobId: not processing, so its next attempt cannot carry the handled stamps");
        }
    }

    /** @return array{body:string,headers:object,signature:string} the signed payload */
    private function encode(Envelope $envelope): array
    {
        $encoded = $this->serializer->encode($envelope);
        $headers = array_map('strval', $encoded['headers'] ?? []);
        return ['body' => $encoded['body'], 'headers' => (object) $headers, 'signature' => $this->signature->sign($encoded['body'], $headers)];
    }

    private function client(): Client
    {
        return new Client(($this->pdo)(), isset($this->options['prefix']) ? ['prefix' => $this->options['prefix']] : []);
    }

    public function get(): iterable
    {
        throw new \LogicException('sluice delivers messages to the webhook route (Sluice\Symfony\WebhookController): run `sluice work` or a cron pass, not messenger:consume');
    }

    public function ack(Envelope $envelope): void
    {
    }

    public function reject(Envelope $envelope): void
    {
    }
}
