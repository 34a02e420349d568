<?php
// The app's endpoint for sluice's order_sync webhook, run by PHP's built-in
// server (any PHP server works the same way):
//
//     APP_DB=mysql://root@127.0.0.1:3306/shop HOOK_SECRET=... php -S 127.0.0.1:9000 receiver.php
//
// It refuses a request whose X-Sluice-Signature does not check out (401: a
// 4xx other than 408/425/429 fails the job at once), and applies each
// Idempotency-Key once: the key goes into `applied` in the same transaction
// as the business effect, so a delivery that repeats an applied key changes
// nothing and is answered 200 like the first. The key names one job and is
// the same on each of its retries; the job's business key (order:N) comes
// apart in X-Sluice-Key, and a later job with that business key has a key
// of its own, so it is applied again.
declare(strict_types=1);
require __DIR__ . '/db.php';

// A signature older or newer than this is refused, so a captured request
// cannot be replayed later.
const SIGNATURE_TOLERANCE_S = 300;

function reply(int $status, array $body, array $headers = []): never
{
    http_response_code($status);
    header('Content-Type: application/json');
    foreach ($headers as $h) {
        header($h);
    }
    echo json_encode($body), "\n";
    exit;
}

/**
 * Checks "t=<unix>,v1=<hex>[,v1=<hex>...]": v1 is HMAC-SHA256(secret,
 * "<t>.<body>"). Several v1 values appear while a secret is rotated; any
 * one matching is enough. Returns null when the signature is good, else why not.
 */
function signature_problem(string $secret, string $header, string $body): ?string
{
    $t = null;
    $sigs = [];
    foreach (explode(',', $header) as $part) {
        [$k, $v] = array_pad(explode('=', trim($part), 2), 2, '');
        if ($k === 't') {
            $t = $v;
        } elseif ($k === 'v1') {
            $sigs[] = $v;
        }
    }
    if ($t === null || !ctype_digit($t)) {
        return 'missing or bad timestamp';
    }
    if (abs(time() - (int) $t) > SIGNATURE_TOLERANCE_S) {
        return 'timestamp too far from now';
    }
    $want = hash_hmac('sha256', $t . '.' . $body, $secret);
    foreach ($sigs as $sig) {
        if (hash_equals($want, $sig)) {
            return null;
        }
    }
    return 'signature mismatch';
}

/**
 * Simulated trouble, so that the demo (and its test) shows sluice's retries
 * and this receiver's idempotency at work. Both strike only a job's first
 * attempt, on a fixed subset of orders:
 *   - "busy": a 503 with Retry-After before anything is written;
 *   - "lost answer": the sync commits, then the answer is a 503, as when the
 *     process dies after its commit; sluice delivers again and the second
 *     delivery finds the key applied.
 * A real receiver has neither.
 */
function simulated_busy(int $order, int $attempt): bool
{
    return $attempt === 1 && $order % 5 === 1;
}

function simulated_lost_answer(int $order, int $attempt): bool
{
    return $attempt === 1 && $order % 6 === 2;
}

set_exception_handler(function (Throwable $e): void {
    // Anything unexpected (the database down, say) is a 500, which sluice
    // retries with backoff.
    error_log('receiver.php: ' . $e->getMessage());
    reply(500, ['error' => 'internal error']);
});

if ($_SERVER['REQUEST_METHOD'] !== 'POST' || parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH) !== '/jobs/order_sync') {
    reply(404, ['error' => 'no such endpoint']);
}
$secret = getenv('HOOK_SECRET');
if ($secret === false || $secret === '') {
    throw new RuntimeException('HOOK_SECRET is not set');
}
$body = file_get_contents('php://input');
$problem = signature_problem($secret, $_SERVER['HTTP_X_SLUICE_SIGNATURE'] ?? '', $body);
if ($problem !== null) {
    reply(401, ['error' => "X-Sluice-Signature: $problem"]);
}
$job = json_decode($body, true);
$key = $_SERVER['HTTP_IDEMPOTENCY_KEY'] ?? '';
$order = $job['payload']['order_id'] ?? null;
if (!is_int($order) || $key === '' || !is_int($job['id'] ?? null) || !is_int($job['attempt'] ?? null)) {
    reply(422, ['error' => 'want payload.order_id, id, attempt and an Idempotency-Key']);
}
$attempt = $job['attempt'];
if (simulated_busy($order, $attempt)) {
    reply(503, ['error' => 'busy, try again'], ['Retry-After: 1']);
}

$pdo = app_pdo();
$pdo->beginTransaction();
try {
    // The key first: a concurrent delivery of the same key waits here on the
    // primary key until this transaction ends, then finds it taken.
    $pdo->prepare('INSERT INTO applied (idempotency_key, job_id, attempt, applied_at) VALUES (?, ?, ?, UTC_TIMESTAMP(6))')
        ->execute([$key, $job['id'], $attempt]);
} catch (PDOException $e) {
    $pdo->rollBack();
    if (mysql_errno($e) !== ER_DUP_ENTRY) {
        throw $e;
    }
    $pdo->prepare('UPDATE applied SET redeliveries = redeliveries + 1 WHERE idempotency_key = ?')->execute([$key]);
    reply(200, ['order' => $order, 'synced' => true, 'already_applied' => true]);
}
$upd = $pdo->prepare("UPDATE orders SET status = 'synced', sync_count = sync_count + 1, synced_at = UTC_TIMESTAMP(6) WHERE id = ?");
$upd->execute([$order]);
if ($upd->rowCount() !== 1) {
    $pdo->rollBack();
    reply(422, ['error' => "order $order does not exist"]);
}
$pdo->commit();
if (simulated_lost_answer($order, $attempt)) {
    reply(503, ['error' => 'simulated: the answer to an applied sync is lost']);
}
reply(200, ['order' => $order, 'synced' => true, 'already_applied' => false]);
