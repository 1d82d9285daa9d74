"""Every renderer, and the one boundary through which output leaves the process."""
