INSERT INTO sluice_claim_state (scope) VALUES (?) ON CONFLICT DO NOTHING
