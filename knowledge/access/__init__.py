"""Access rules, each in one place: the override rule (`rules`), grant rows (`grants`), ACL values and
principals (`principals`), and the state an index mirrors of each document (`state`). The token
format itself is part of the index contract (`retrieval_backends.types`)."""
