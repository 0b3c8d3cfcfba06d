# ~/.bashrc: interactive shells only
[[ $- == *i* ]] || return

HISTSIZE=10000
HISTCONTROL=ignoreboth
shopt -s histappend checkwinsize globstar

export EDITOR=nvim
PATH="$HOME/.local/bin:$PATH"

alias ll='ls -alF'
alias g=git
PS1='\u@\h:\w\$ '
