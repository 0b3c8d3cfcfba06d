#!/bin/sh
[ -d "$HOME/.cache/chezmoi-demo" ] && exit 0
mkdir -p "$HOME/.cache/chezmoi-demo"
