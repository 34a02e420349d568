SELECT ? AS status, ? AS refund, ? AS keep_run_at, ? AS delay_us, ? AS finish, ? AS error, ? AS result, ? AS entry, ? AS keep, ? AS id, ? AS token
