//! Chooses a backend from policy + probes, spawns the launcher, streams and
//! caps output, enforces timeouts, forwards signals, reports what was enforced.
