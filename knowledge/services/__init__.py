"""Services: every write to the knowledge base goes through these functions."""
