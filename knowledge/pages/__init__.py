"""Server-rendered staff pages beside the admin: the search playground, eval reports, admin panels."""
