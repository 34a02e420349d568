<?php
// The app side: each order is created and its sync job enqueued in ONE
// transaction, with a plain INSERT into sluice_jobs. If the transaction
// rolls back, the job never existed; if it commits, sluice will run it.
//
//     APP_DB=mysql://root@127.0.0.1:3306/shop php enqueue.php FIRST_ORDER LAST_ORDER
//
// To show both sides of that promise, the script declines every 7th order
// (its transaction rolls back after the enqueue) and enqueues every 4th
// order's job twice (a double submit: the second INSERT finds the key and
// returns the same job, without aborting the transaction).
declare(strict_types=1);
require __DIR__ . '/db.php';

one_line_errors();

final class OrderDeclined extends RuntimeException
{
}

// Attempts per order when MySQL picks the transaction as a deadlock victim
// or a lock wait times out: place_order has rolled the whole transaction
// back by then, so running it again is safe.
const TX_ATTEMPTS = 5;

/**
 * Enqueues a job inside the caller's transaction and returns its id. The
 * business key is unique in sluice_jobs (index sluice_jobs_business_key_unique), so a key
 * that is already there does not insert a second job: ON DUPLICATE KEY
 * UPDATE turns the INSERT into a no-op on the existing row, and
 * LAST_INSERT_ID(id) makes that row's id the one returned.
 */
function enqueue_job(PDO $pdo, string $type, string $key, array $payload): int
{
    $pdo->prepare(
        'INSERT INTO sluice_jobs (type, business_key, payload) VALUES (?, ?, ?)
         ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)'
    )->execute([$type, $key, json_encode($payload, JSON_THROW_ON_ERROR)]);
    return (int) $pdo->query('SELECT LAST_INSERT_ID()')->fetchColumn();
}

function place_order(PDO $pdo, int $id): array
{
    $pdo->beginTransaction();
    try {
        $pdo->prepare('INSERT INTO orders (id, customer, amount_cents) VALUES (?, ?, ?)')
            ->execute([$id, "customer-$id", 100 * $id]);
        $key = "order:$id";
        $job = enqueue_job($pdo, 'order_sync', $key, ['order_id' => $id]);
        if ($id % 4 === 0) {
            $again = enqueue_job($pdo, 'order_sync', $key, ['order_id' => $id]);
            if ($again !== $job) {
                throw new LogicException("order $id: second enqueue of $key returned job $again, want $job");
            }
        }
        $pdo->prepare('UPDATE orders SET job_id = ? WHERE id = ?')->execute([$job, $id]);
        if ($id % 7 === 0) {
            throw new OrderDeclined("order $id: payment declined");
        }
        $pdo->commit();
        return ['order' => $id, 'job' => $job, 'committed' => true];
    } catch (Throwable $e) {
        $pdo->rollBack();
        if ($e instanceof OrderDeclined) {
            return ['order' => $id, 'committed' => false, 'reason' => $e->getMessage()];
        }
        throw $e;
    }
}

if ($argc !== 3 || !ctype_digit($argv[1]) || !ctype_digit($argv[2]) || (int) $argv[1] < 1 || (int) $argv[1] > (int) $argv[2]) {
    fwrite(STDERR, "usage: php enqueue.php FIRST_ORDER LAST_ORDER (positive integers, FIRST_ORDER <= LAST_ORDER)\n");
    exit(2);
}
$pdo = app_pdo();
for ($id = (int) $argv[1]; $id <= (int) $argv[2]; $id++) {
    for ($attempt = 1; ; $attempt++) {
        try {
            echo json_encode(place_order($pdo, $id)), "\n";
            break;
        } catch (PDOException $e) {
            $retryable = in_array(mysql_errno($e), [ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT], true);
            if (!$retryable || $attempt >= TX_ATTEMPTS) {
                fwrite(STDERR, "enqueue.php: order $id: " . $e->getMessage() . "\n");
                exit(1);
            }
        }
    }
}
