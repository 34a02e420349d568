UPDATE sluice_leases SET holder = '', expires_at = 'epoch' WHERE name = $1 AND holder = $2
