UPDATE sluice_claim_state SET last_partition = ? WHERE scope = ?
