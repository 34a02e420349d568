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
 * encoded envelope is the job's payload ({"body", "headers"}), a DelayStamp
 * its run time. sluice delivers it to WebhookController, which hands it to
 * the bus; there is no messenger:consume, so get() is not how messages
 * arrive.
 */
final class SluiceTransport implements TransportInterface
{
    private readonly Client $client;
    private readonly SerializerInterface $serializer;

    /**
     * @param array{type?:string,queue?:string,prefix?:string} $options type: the
     *     sluice type that sluice.yaml sends to the webhook route (default
     *     "messenger"); queue: the sluice queue (default: the type's)
     */
    public function __construct(\PDO $pdo, ?SerializerInterface $serializer = null, private readonly array $options = [])
    {
        $this->client = new Client($pdo, isset($options['prefix']) ? ['prefix' => $options['prefix']] : []);
        $this->serializer = $serializer ?? new PhpSerializer();
    }

    public function send(Envelope $envelope): Envelope
    {
        $encoded = $this->serializer->encode($envelope);
        $options = [];
        if (isset($this->options['queue'])) {
            $options['queue'] = $this->options['queue'];
        }
        $delay = $envelope->last(DelayStamp::class);
        if ($delay !== null && $delay->getDelay() > 0) {
            $options['delay'] = $delay->getDelay() / 1000;
        }
        $r = $this->client->enqueue($this->options['type'] ?? 'messenger',
            ['body' => $encoded['body'], 'headers' => (object) ($encoded['headers'] ?? [])], $options);
        return $envelope->with(new TransportMessageIdStamp($r->id));
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
