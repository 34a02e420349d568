SELECT ? AS status, ? AS refund, ? AS keep_run_at, ? AS delay_us, ? AS finish, ? AS error, ? AS result, ? AS id, ? AS token
