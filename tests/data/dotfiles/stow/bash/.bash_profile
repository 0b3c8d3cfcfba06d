# login shells read this, then the interactive settings
[ -f ~/.bashrc ] && . ~/.bashrc
