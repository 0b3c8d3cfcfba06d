#!/bin/sh
tmux source-file "$HOME/.tmux.conf" 2>/dev/null || true
