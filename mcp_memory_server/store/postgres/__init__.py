"""The PostgreSQL backend, for replicas: a connection pool, advisory write locks, and changes
announced to other processes with NOTIFY."""
