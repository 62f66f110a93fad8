// placeholder: replaced by the module's implementation
int main(){return 0;}
