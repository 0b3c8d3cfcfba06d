[ -f ~/.aliases ] && . ~/.aliases
export PATH="$HOME/.local/bin:$PATH"
