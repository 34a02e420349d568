<?php

declare(strict_types=1);

namespace App\Providers;

use Illuminate\Cache\RateLimiting\Limit;
use Illuminate\Foundation\Support\Providers\RouteServiceProvider as ServiceProvider;
use Illuminate\Http\Request;
use Illuminate\Support\Facades\RateLimiter;
use Illuminate\Support\Facades\Route;

/** As in the laravel/laravel skeleton: routes/api.php under /api, behind throttle:api (60 a minute). */
final class RouteServiceProvider extends ServiceProvider
{
    public function boot(): void
    {
        RateLimiter::for('api', fn (Request $request) => Limit::perMinute(60)->by($request->ip()));
        $this->routes(function () {
            Route::prefix('api')->middleware('api')->group(base_path('routes/api.php'));
        });
    }
}
