INSERT INTO sluice_claim_state (scope) VALUES (?) ON DUPLICATE KEY UPDATE scope = scope
