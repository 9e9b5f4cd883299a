"""What SQL should not do alone: statistics, rendering, plots (filled by the benchmark issues)."""
