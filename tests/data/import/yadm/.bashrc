# ~/.bashrc, kept with yadm
[ -z "$PS1" ] && return
HISTCONTROL=ignoreboth
HISTSIZE=5000
[ -f ~/.profile.local ] && . ~/.profile.local
export PATH="$HOME/.local/bin:$PATH"
