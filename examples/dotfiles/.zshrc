# ~/.zshrc: interactive zsh.
HISTFILE=~/.zsh_history
HISTSIZE=10000
SAVEHIST=10000
setopt share_history hist_ignore_dups auto_cd extended_glob

export EDITOR=nvim
typeset -U path
path=(~/bin $path)

autoload -Uz compinit && compinit
bindkey -e

[[ -f ~/.aliases ]] && source ~/.aliases

PROMPT='%F{cyan}%~%f %# '
