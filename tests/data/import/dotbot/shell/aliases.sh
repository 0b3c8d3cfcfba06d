alias ll='ls -lah'
alias g=git
alias v=vim
