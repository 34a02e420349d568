<?php

declare(strict_types=1);

namespace Sluice\Symfony;

use Sluice\Webhook\Receiver;
use Sluice\Webhook\Reply;
use Sluice\Webhook\SignatureException;
use Symfony\Component\HttpFoundation\Request;
use Symfony\Component\HttpFoundation\Response;
use Symfony\Component\Messenger\Exception\HandlerFailedException;
use Symfony\Component\Messenger\Envelope;
use Symfony\Component\Messenger\Exception\RecoverableExceptionInterface;
use Symfony\Component\Messenger\Exception\UnrecoverableExceptionInterface;
use Symfony\Component\Messenger\MessageBusInterface;
use Symfony\Component\Messenger\Stamp\HandledStamp;
use Symfony\Component\Messenger\Stamp\ReceivedStamp;
use Symfony\Component\Messenger\Stamp\TransportMessageIdStamp;
use Symfony\Component\Messenger\Transport\Serialization\PhpSerializer;
use Symfony\Component\Messenger\Transport\Serialization\SerializerInterface;

/**
 * The route sluice's webhook calls: checks the webhook's signature, then
 * the app's own signature on the envelope (EnvelopeSignature, the
 * transport's `secret`) before anything is decoded, since anyone who can
 * enqueue a sluice job can write a payload and Messenger's PhpSerializer
 * unserializes it; then decodes the envelope and dispatches it on the bus as
 * received from the transport (so handlers run, senders are skipped).
 * 200 when handled; an exception is a 503 that sluice retries with its
 * backoff, or a 422 that fails the job (the last attempt, an
 * UnrecoverableExceptionInterface): failed() applies Symfony's rules.
 */
final class WebhookController
{
    private readonly EnvelopeSignature $signature;

    /**
     * @param string|list<string> $secrets the sluice type's webhook secret(s)
     * @param string|list<string>|null $messageSecret the transport's `secret`
     *     (several while it rotates); required: an envelope it did not sign
     *     is refused (422) without being decoded
     * @param SluiceTransport|null $transport the transport that wrote the
     *     messages: when some handlers of a message succeed and another
     *     fails, the retry carries their HandledStamps (written into the
     *     job's next attempt) and runs only the failed ones, as Symfony's
     *     worker does; without it, a retry runs every handler again
     */
    public function __construct(
        private readonly MessageBusInterface $bus,
        private readonly string|array $secrets,
        private readonly ?SerializerInterface $serializer = null,
        private readonly string $transportName = 'sluice',
        private readonly ?CurrentDelivery $current = null,
        string|array|null $messageSecret = null,
        private readonly ?SluiceTransport $transport = null,
    ) {
        $this->signature = new EnvelopeSignature($messageSecret, 'messageSecret');
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
        try {
            $encoded = $this->signature->verify($d->payload);
        } catch (\UnexpectedValueException $e) {
            return Reply::fail($e->getMessage());
        }
        try {
            $envelope = ($this->serializer ?? new PhpSerializer())->decode($encoded);
        } catch (\Throwable $e) {
            return Reply::fail('payload: cannot decode the envelope: ' . $e->getMessage());
        }
        $this->current?->set($d);
        try {
            $this->bus->dispatch($envelope->with(new ReceivedStamp($this->transportName), new DeliveryStamp($d)));
        } catch (\Throwable $e) {
            return $this->failed($e, $envelope, $d);
        } finally {
            $this->current?->set(null);
        }
        return Reply::done(['message' => get_class($envelope->getMessage())]);
    }

    /**
     * The answer to a failed dispatch, by Symfony's own rule
     * (SendFailedMessageForRetryListener): a RecoverableExceptionInterface,
     * alone or among the handlers' exceptions, is always retried; when every
     * one is an UnrecoverableExceptionInterface the message fails at once;
     * otherwise it is retried while sluice's attempts last. A retry carries
     * the HandledStamps of the handlers that succeeded (keepHandled), and a
     * recoverable failure on the last attempt goes on as a new sluice job,
     * as Symfony's worker sends it back to its transport.
     */
    private function failed(\Throwable $e, Envelope $envelope, \Sluice\Webhook\Delivery $d): Reply
    {
        $nested = $e instanceof HandlerFailedException ? $e->getNestedExceptions() : [$e];
        $recoverable = array_filter($nested, fn ($n) => $n instanceof RecoverableExceptionInterface) !== [];
        $unrecoverable = !$recoverable && array_filter($nested, fn ($n) => !$n instanceof UnrecoverableExceptionInterface) === [];
        if ($unrecoverable) {
            return Reply::fail($e->getMessage());
        }
        $failed = $e instanceof HandlerFailedException ? $e->getEnvelope() : $envelope;
        if ($d->isLastAttempt()) {
            if (!$recoverable || $this->transport === null) {
                return Reply::fail($e->getMessage());
            }
            $next = $this->transport->send($failed->withoutAll(ReceivedStamp::class)->withoutAll(DeliveryStamp::class))
                ->last(TransportMessageIdStamp::class)?->getId();
            return Reply::done(['retried_as' => $next, 'reason' => $e->getMessage()]);
        }
        if ($this->transport !== null && count($failed->all(HandledStamp::class)) > count($envelope->all(HandledStamp::class))) {
            try {
                $this->transport->keepHandled($failed, $d->id);
            } catch (\Throwable $k) {
                // The retry then runs every handler again.
                return Reply::retry($e->getMessage() . ' (the handled stamps were not kept: ' . $k->getMessage() . ')');
            }
        }
        return Reply::retry($e->getMessage());
    }
}
