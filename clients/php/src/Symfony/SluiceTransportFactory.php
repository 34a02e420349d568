<?php

declare(strict_types=1);

namespace Sluice\Symfony;

use Symfony\Component\Messenger\Transport\Serialization\SerializerInterface;
use Symfony\Component\Messenger\Transport\TransportFactoryInterface;
use Symfony\Component\Messenger\Transport\TransportInterface;

/**
 * The DSN sluice://TYPE[?queue=Q&prefix=P] (messenger.yaml) for a
 * transport on the PDO that $pdo gives, such as
 * fn () => $doctrine->getConnection()->getNativeConnection(); it is called at
 * every send, so the transport follows the app's current connection. The
 * option `secret` (required, typically %kernel.secret%) signs the envelopes.
 */
final class SluiceTransportFactory implements TransportFactoryInterface
{
    /** @param \Closure():\PDO $pdo */
    public function __construct(private readonly \Closure $pdo)
    {
    }

    public function createTransport(string $dsn, array $options, SerializerInterface $serializer): TransportInterface
    {
        $u = parse_url($dsn);
        if ($u === false || ($u['scheme'] ?? '') !== 'sluice') {
            throw new \InvalidArgumentException("messenger DSN $dsn: want sluice://TYPE[?queue=Q]");
        }
        parse_str($u['query'] ?? '', $q);
        if (isset($q['secret'])) {
            // A DSN is logged and shown (debug:messenger); a secret belongs in the options.
            throw new \InvalidArgumentException("messenger DSN: secret: give it as the transport's `secret` option, not in the DSN");
        }
        $opts = array_filter(['type' => $u['host'] ?? null, 'queue' => $q['queue'] ?? $options['queue'] ?? null,
            'prefix' => $q['prefix'] ?? $options['prefix'] ?? null, 'secret' => $options['secret'] ?? null],
            fn ($v) => $v !== null && $v !== '' && $v !== []);
        return new SluiceTransport($this->pdo, $serializer, $opts);
    }

    public function supports(string $dsn, array $options): bool
    {
        return str_starts_with($dsn, 'sluice://');
    }
}
