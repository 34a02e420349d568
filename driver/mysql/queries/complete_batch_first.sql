SELECT ? AS status, ? AS refund, ? AS keep_run_at, ? AS delay_us, ? AS finish, ? AS error, ? AS result, ? AS entry, ? AS keep, ? AS keep2, ? AS entry2, ? AS id, ? AS token
