"""The worker's confinement: the tiers (bubblewrap, a user of its own, none) and their limits."""
