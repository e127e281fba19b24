import { render } from 'preact';
import { LocationProvider, Route, Router } from 'preact-iso';
import { Layout } from './components/layout';
import { BatchPage } from './pages/batch-page';
import { HomePage } from './pages/home-page';
import { InvocationPage } from './pages/invocation-page';
import { NotFoundPage } from './pages/not-found-page';
import { OperationPage } from './pages/operation-page';
import { OrganizationPage } from './pages/organization-page';
import { SessionProvider } from './session/session';
import './styles.css';

/** Every page has its own address under /console, to paste into a ticket. */
function App() {
  return (
    <LocationProvider scope="/console">
      <SessionProvider>
        <Layout>
          <Router>
            <Route path="/console" component={HomePage} />
            <Route path="/console/invocations/:invocationId" component={InvocationPage} />
            <Route path="/console/organizations/:organizationId" component={OrganizationPage} />
            <Route path="/console/organizations/:organizationId/batches/:batchId" component={BatchPage} />
            <Route path="/console/operations/:operationId" component={OperationPage} />
            <Route default component={NotFoundPage} />
          </Router>
        </Layout>
      </SessionProvider>
    </LocationProvider>
  );
}

render(<App />, document.getElementById('app')!);
