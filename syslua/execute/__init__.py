"""Execution: the ready-queue scheduler, per-item steps, health checks, atomic apply and rollback."""
