"""The revisions, oldest first: 0001 tenants, 0002 schedules and run records."""
