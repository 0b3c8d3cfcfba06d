alias ll='ls -l'
alias gs='git status'
