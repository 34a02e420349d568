<?php

declare(strict_types=1);

namespace Sluice;

/** The job an enqueue wrote, or the one that already held its key. */
final class EnqueueResult
{
    public function __construct(
        public readonly int $id,
        /** True when the key was taken: $id is the existing job's, nothing was written. */
        public readonly bool $duplicate,
    ) {
    }
}
