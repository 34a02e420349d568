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
$schema->create('reported', function (Blueprint $t) {
    $t->string('class', 255);
    $t->string('message', 255);
});
$schema->create('log', function (Blueprint $t) {
    $t->id();
    $t->string('job', 255);
    $t->string('event', 32);
    $t->string('detail', 255)->default('');
    $t->timestamp('at', 6)->useCurrent();
});
$schema->create('job_batches', function (Blueprint $t) { // Laravel's queue:batches-table
    $t->string('id')->primary();
    $t->string('name');
    $t->integer('total_jobs');
    $t->integer('pending_jobs');
    $t->integer('failed_jobs');
    $t->longText('failed_job_ids');
    $t->mediumText('options')->nullable();
    $t->integer('cancelled_at')->nullable();
    $t->integer('created_at');
    $t->integer('finished_at')->nullable();
});
$schema->create('laravel_jobs', function (Blueprint $t) { // Laravel's queue:table, for its own database queue
    $t->bigIncrements('id');
    $t->string('queue')->index();
    $t->longText('payload');
    $t->unsignedTinyInteger('attempts');
    $t->unsignedInteger('reserved_at')->nullable();
    $t->unsignedInteger('available_at');
    $t->unsignedInteger('created_at');
});
