"""Running: executing pools through call sites, the baselines, and the deterministic and
exploring runs that stream result rows."""
