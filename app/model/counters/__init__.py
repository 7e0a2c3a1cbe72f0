"""What engines count: Prometheus exposition text, and the speculative-decoding counters read from it into an
acceptance calibration."""
