# What REST2 cannot create: pathwatch's queue, its custom fields (problem key, state, anomaly ids,
# affected paths), the bot
# user with its rights and its auth token. rt-setup-database --action insert reads this file;
# stack/rt.py passes the queue name, the token file and root's password in the environment.
our @Queues = ({
    Name => $ENV{PATHWATCH_RT_QUEUE}, Description => 'pathwatch: network problems found in measurements',
    CorrespondAddress => '', CommentAddress => '',
});
our @CustomFields = (
    { Name => 'pathwatch-key', Type => 'FreeformSingle', LookupType => 'RT::Queue-RT::Ticket',
      Queue => [$ENV{PATHWATCH_RT_QUEUE}], Description => 'pathwatch problem key (one ticket per problem)' },
    { Name => 'pathwatch-state', Type => 'FreeformSingle', LookupType => 'RT::Queue-RT::Ticket',
      Queue => [$ENV{PATHWATCH_RT_QUEUE}], Description => 'pathwatch: the anomalies this ticket covers (JSON)' },
    { Name => 'pathwatch-anomalies', Type => 'FreeformMultiple', LookupType => 'RT::Queue-RT::Ticket',
      Queue => [$ENV{PATHWATCH_RT_QUEUE}], Description => 'pathwatch: ids of the anomalies this ticket covers' },
    { Name => 'pathwatch-paths', Type => 'FreeformMultiple', LookupType => 'RT::Queue-RT::Ticket',
      Queue => [$ENV{PATHWATCH_RT_QUEUE}], Description => 'pathwatch: paths (source>destination) still affected' },
);
our @Users = ({
    Name => 'pathwatch-bot', RealName => 'pathwatch', Privileged => 1,
    EmailAddress => 'pathwatch-bot@pathwatch.invalid',
});
our @ACL = (
    (map { { UserId => 'pathwatch-bot', Queue => $ENV{PATHWATCH_RT_QUEUE}, Right => $_ } }
        qw(SeeQueue ShowTicket CreateTicket ModifyTicket CommentOnTicket ReplyToTicket
           ShowTicketComments SeeCustomField ModifyCustomField)),
    { UserId => 'pathwatch-bot', Right => 'ManageAuthTokens' },
);
our @Final = (sub {
    my $bot = RT::User->new(RT->SystemUser);
    $bot->Load('pathwatch-bot');
    my $token = RT::AuthToken->new(RT->SystemUser);
    my ($id, $message, $auth) = $token->Create(Owner => $bot->Id, Description => 'pathwatch tickets');
    die "pathwatch: cannot create the bot's token: $message\n" unless $id;
    my $old = umask 077;
    open(my $out, '>', $ENV{PATHWATCH_RT_TOKEN_FILE}) or die "pathwatch: $ENV{PATHWATCH_RT_TOKEN_FILE}: $!\n";
    print $out "$auth\n";
    close $out;
    umask $old;
    my $root = RT::User->new(RT->SystemUser);
    $root->Load('root');
    my ($ok, $why) = $root->SetPassword($ENV{PATHWATCH_RT_ROOT_PASSWORD});
    die "pathwatch: cannot set root's password: $why\n" unless $ok;
});
1;
