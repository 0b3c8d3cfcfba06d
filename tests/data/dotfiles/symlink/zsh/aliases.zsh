alias reload='exec zsh'
alias dots='cd $DOTFILES'
