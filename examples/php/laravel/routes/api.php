<?php
// The app's API routes (/api/..., throttled). sluice's route is not here:
// SluiceServiceProvider registers POST /sluice/jobs outside this group.
use Illuminate\Support\Facades\Route;

Route::get('/ping', fn () => ['pong' => true]);
