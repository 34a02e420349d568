<?php

declare(strict_types=1);

namespace Sluice\Symfony;

use Sluice\Webhook\Receiver;
use Sluice\Webhook\Reply;
use Sluice\Webhook\SignatureException;
use Symfony\Component\HttpFoundation\Request;
use Symfony\Component\HttpFoundation\Response;
use Symfony\Component\Messenger\Exception\UnrecoverableExceptionInterface;
use Symfony\Component\Messenger\MessageBusInterface;
use Symfony\Component\Messenger\Stamp\ReceivedStamp;
use Symfony\Component\Messenger\Transport\Serialization\PhpSerializer;
use Symfony\Component\Messenger\Transport\Serialization\SerializerInterface;

/**
 * The route sluice's webhook calls: checks the signature, decodes the
 * envelope and dispatches it on the bus as received from the transport
 * (so handlers run, senders are skipped). 200 when handled; an exception
 * is a 503 that sluice retries with its backoff, or a 422 on the last
 * attempt and for an UnrecoverableExceptionInterface, so that retries and
 * failures are sluice's.
 */
final class WebhookController
{
    /** @param string|list<string> $secrets */
    public function __construct(
        private readonly MessageBusInterface $bus,
        private readonly string|array $secrets,
        private readonly ?SerializerInterface $serializer = null,
        private readonly string $transportName = 'sluice',
        private readonly ?CurrentDelivery $current = null,
    ) {
    }

    public function __invoke(Request $request): Response
    {
        $reply = $this->handle($request);
        return new Response($reply->body, $reply->status, $reply->headers);
    }

    private function handle(Request $request): Reply
    {
        try {
            $d = (new Receiver($this->secrets))->receive($request->getContent(), $request->headers->all());
        } catch (SignatureException $e) {
            return Reply::unauthorized($e->getMessage());
        } catch (\UnexpectedValueException $e) {
            return Reply::fail($e->getMessage());
        }
        if (!is_string($d->payload['body'] ?? null)) {
            return Reply::fail('payload.body: want the encoded envelope');
        }
        try {
            $envelope = ($this->serializer ?? new PhpSerializer())->decode(['body' => $d->payload['body'], 'headers' => (array) ($d->payload['headers'] ?? [])]);
        } catch (\Throwable $e) {
            return Reply::fail('payload: cannot decode the envelope: ' . $e->getMessage());
        }
        $this->current?->set($d);
        try {
            $this->bus->dispatch($envelope->with(new ReceivedStamp($this->transportName), new DeliveryStamp($d)));
        } catch (\Throwable $e) {
            $unrecoverable = $e instanceof UnrecoverableExceptionInterface
                || ($e instanceof \Symfony\Component\Messenger\Exception\HandlerFailedException
                    && array_filter($e->getNestedExceptions(), fn ($n) => $n instanceof UnrecoverableExceptionInterface) !== []);
            if ($unrecoverable || $d->isLastAttempt()) {
                return Reply::fail($e->getMessage());
            }
            return Reply::retry($e->getMessage());
        } finally {
            $this->current?->set(null);
        }
        return Reply::done(['message' => get_class($envelope->getMessage())]);
    }
}
