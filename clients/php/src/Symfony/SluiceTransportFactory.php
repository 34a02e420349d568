<?php

declare(strict_types=1);

namespace Sluice\Symfony;

use Symfony\Component\Messenger\Transport\Serialization\SerializerInterface;
use Symfony\Component\Messenger\Transport\TransportFactoryInterface;
use Symfony\Component\Messenger\Transport\TransportInterface;

/**
 * The DSN sluice://TYPE[?queue=Q&prefix=P] (messenger.yaml) for a
 * transport on the PDO that $pdo gives, such as
 * fn () => $doctrine->getConnection()->getNativeConnection().
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
        $opts = array_filter(['type' => $u['host'] ?? null, 'queue' => $q['queue'] ?? $options['queue'] ?? null,
            'prefix' => $q['prefix'] ?? $options['prefix'] ?? null], fn ($v) => $v !== null && $v !== '');
        return new SluiceTransport(($this->pdo)(), $serializer, $opts);
    }

    public function supports(string $dsn, array $options): bool
    {
        return str_starts_with($dsn, 'sluice://');
    }
}
