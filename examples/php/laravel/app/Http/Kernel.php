<?php

declare(strict_types=1);

namespace App\Http;

use Illuminate\Foundation\Http\Kernel as HttpKernel;

/** The skeleton's HTTP kernel, cut to what the example uses: the api group, throttled. */
final class Kernel extends HttpKernel
{
    /** bootstrap.php has configured and booted the app already. */
    protected $bootstrappers = [];

    protected $middlewareGroups = [
        'api' => ['throttle:api', \Illuminate\Routing\Middleware\SubstituteBindings::class],
    ];

    protected $routeMiddleware = [
        'throttle' => \Illuminate\Routing\Middleware\ThrottleRequests::class,
    ];
}
