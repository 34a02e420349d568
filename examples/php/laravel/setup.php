<?php
// php setup.php: the app's tables.
declare(strict_types=1);
$app = require __DIR__ . '/bootstrap.php';

use Illuminate\Database\Schema\Blueprint;
use Illuminate\Support\Facades\DB;

$schema = DB::connection()->getSchemaBuilder();
$schema->create('orders', function (Blueprint $t) {
    $t->unsignedBigInteger('id')->primary();
    $t->string('status', 16)->default('new');
    $t->integer('sync_count')->default(0);
});
$schema->create('reports', function (Blueprint $t) {
    $t->string('day', 10);
    $t->unsignedBigInteger('job_id');
});
$schema->create('failures', function (Blueprint $t) {
    $t->unsignedBigInteger('order_id');
    $t->string('error', 255);
});
(new Sluice\Idempotency(DB::connection()->getPdo(), DB::connection()->getTablePrefix() . 'applied'))->createTable();
