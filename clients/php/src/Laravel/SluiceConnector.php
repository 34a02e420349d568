<?php

declare(strict_types=1);

namespace Sluice\Laravel;

use Illuminate\Contracts\Config\Repository as Config;
use Illuminate\Database\ConnectionResolverInterface;
use Illuminate\Queue\Connectors\ConnectorInterface;

/**
 * Connects the queue connection `sluice` (config/queue.php):
 *
 *     'sluice' => ['driver' => 'sluice', 'connection' => null, 'type' => 'laravel',
 *                  'queue' => 'default', 'after_commit' => true, 'tries' => 1],
 *
 * connection: the database connection whose PDO (and transaction) jobs are
 * written with, null for the default one; type: the sluice job type that
 * sluice.yaml sends to the webhook route; prefix: sluice's table prefix;
 * tries: the attempts of a job class without $tries (queue:work's --tries,
 * default 1). Jobs are signed with a key derived from app.key (APP_KEY).
 */
final class SluiceConnector implements ConnectorInterface
{
    public function __construct(private readonly ConnectionResolverInterface $db, private readonly Config $config)
    {
    }

    public function connect(array $config)
    {
        return new SluiceQueue(
            $this->db->connection($config['connection'] ?? null),
            $config['type'] ?? 'laravel',
            $config['queue'] ?? 'default',
            $config['prefix'] ?? null,
            $config['after_commit'] ?? null,
            SignedPayload::keys((array) $this->config->get('app', [])),
            (int) ($config['tries'] ?? 1),
        );
    }
}
