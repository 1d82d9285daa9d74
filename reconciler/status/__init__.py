"""`reconciler status`: what runs, per environment of the manifest."""
