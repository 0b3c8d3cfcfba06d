# ~/.bashrc: interactive bash.
[[ $- != *i* ]] && return

HISTSIZE=10000
HISTFILESIZE=20000
HISTCONTROL=ignoreboth:erasedups
shopt -s histappend checkwinsize globstar

export EDITOR=nvim
case ":$PATH:" in
  *":$HOME/bin:"*) ;;
  *) PATH="$HOME/bin:$PATH" ;;
esac

[ -f ~/.aliases ] && . ~/.aliases

PS1='\[\e[36m\]\w\[\e[0m\] \$ '
