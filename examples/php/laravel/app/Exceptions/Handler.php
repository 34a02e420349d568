<?php

declare(strict_types=1);

namespace App\Exceptions;

use Illuminate\Foundation\Exceptions\Handler as ExceptionHandler;
use Illuminate\Support\Facades\DB;
use Throwable;

/** The app's exception handler: what it reports lands in the `reported` table (a log, an error tracker). */
final class Handler extends ExceptionHandler
{
    public function register(): void
    {
        $this->reportable(function (Throwable $e) {
            DB::table('reported')->insert(['class' => get_class($e), 'message' => mb_substr($e->getMessage(), 0, 255)]);
            return false;
        });
    }

    /** An API without views: errors answer JSON. */
    protected function shouldReturnJson($request, Throwable $e)
    {
        return true;
    }
}
