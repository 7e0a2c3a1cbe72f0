"""The arithmetic of speculative decoding: acceptance and its closed forms, sampling, trees, Monte Carlo, bursty and
mixed-length drafts, n-gram lookup and the draft sources compared; pure functions of their inputs."""
